#!/usr/bin/python3
"""Sentences of the licence texts every Debian system has, labelled by the rule the example and
its test state: a sentence's label is the licence it comes from. A sentence is text up to '.',
';' or ':' followed by whitespace, with whitespace runs made one space; kept when 30..400
characters long. Writes "label<TAB>sentence" lines (`cohort data import labelled-text`).
usage: make_sentences.py OUT.tsv"""
import re
import sys

LICENCES = ["Apache-2.0", "Artistic", "GFDL-1.3", "GPL-3", "MPL-2.0"]

with open(sys.argv[1], "w", encoding="utf-8") as out:
    for name in LICENCES:
        with open(f"/usr/share/common-licenses/{name}", encoding="utf-8", errors="replace") as f:
            text = re.sub(r"\s+", " ", f.read())
        for sentence in re.split(r"(?<=[.;:])\s+", text):
            if 30 <= len(sentence) <= 400:
                out.write(f"{name}\t{sentence}\n")
