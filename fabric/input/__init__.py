"""Hostile input, read safely: bounded YAML with the line of every key, a small
declarative schema, and the Problem/InputError that name file, field, line and fix.

May import: no other room (the bottom room of the compiler).
"""
