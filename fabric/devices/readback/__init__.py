"""Read-back parsers of the generated switch configs (SONiC config_db.json + FRR, EOS startup-config).

sonic/eos/intent: a switch's files -> one SwitchIntent (what the lab deploys and push re-applies);
facts: the same files -> DeviceFacts (what validate cross-checks). Pure: text in, data out.

May import: input, platforms (vendor speed forms); the standard library; no processes.
"""
