"""Vendor facts about switch platforms: port names and lanes per speed, EOS speed
forms (data/eos_speeds.yaml); the home of the platform catalog (its files as data/).

Sits below the design because the design file checks its platform keys against
these facts and the graph builder names ports with them.
May import: input.
"""
