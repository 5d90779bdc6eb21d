"""The example designs and training jobs, shipped as package data (railonly.labs):
`railonly demo` compiles mini-routed.yml from here when no design is given."""
