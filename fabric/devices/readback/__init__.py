"""Pure readers of a switch's config files (SONiC config_db.json, EOS startup-config) into one SwitchIntent.

May import: the standard library only (text in, data out; no processes, no other room).
"""
