"""The platform catalog's data: one YAML file per switch platform (read by railonly.fabric.catalog)."""
