"""Read-back parsers of the generated switch configs (SONiC config_db.json + FRR, EOS startup-config).

One parser per vendor, shared by validate and the lab: sonic.parse_config_db and
eos.parse_startup_config walk a switch's files once into a config.SwitchConfig, whose
``facts`` (facts.DeviceFacts) validate cross-checks and whose ``intent()`` (intent.SwitchIntent)
the lab deploys and push re-applies. Pure: text in, data out.

May import: input, platforms (vendor speed forms), outdir_layout (file names); the standard library; no processes.
"""
