"""Device configs from the graph: the vendor-neutral switch view, RoCE QoS plan,
SONiC (sonic_render: config_db.json + frr.conf), Arista EOS (eos_render), host configs, and the one Jinja2
environment. sonic_reference.md records the ConfigDB rules the SONiC renderer follows.

May import: input, platforms, design, graph; the fabric-level edge utilities
railonly.fabric.parallel and railonly.fabric.progress.
"""
