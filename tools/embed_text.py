#!/usr/bin/env python3
"""Writes a text file into a C++ header as a raw string constant, so that the
gpumem binary carries it (reuse-sim record's Python hook):

    tools/embed_text.py INPUT OUTPUT NAME
"""
import sys

src, out, name = sys.argv[1:4]
text = open(src, encoding="utf-8").read()
if ')embed"' in text:
    sys.exit(src + ': contains the raw string delimiter )embed"')
with open(out, "w", encoding="utf-8") as f:
    f.write("// Generated from %s by tools/embed_text.py: edit that file.\n#pragma once\n\n" % src.split("/")[-1])
    f.write("inline constexpr char %s[] = R\"embed(%s)embed\";\n" % (name, text))
