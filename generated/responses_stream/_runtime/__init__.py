"""The hand-written runtime that the generated modules import.

Written by hand and kept here, in the package it ships in: the generator never
renders these files; it copies them into every other package it writes.
"""
