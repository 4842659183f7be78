#!/usr/bin/env python3
"""Split docs/SCENARIO.md, the scenario and report contract as one file, into pages.

    python3 scripts/split_scenario_doc.py [--doc docs/SCENARIO.md] [--out docs/scenario]

Reads the contract in its one-file form and writes:

* docs/scenario/*.md: one page per section ("## Scenario file", "### Commands", ...); the
  extensions' scenario-key table is split further by the key's first word (`model.*`,
  `plan.*`, `cluster.*`, ...), each group a page, rows in the order the file gives them;
* docs/SCENARIO.md: the index, its title and opening paragraphs and a link to every page
  (so links to docs/SCENARIO.md keep working).

No line of a page is longer than 200 characters outside code blocks: a table with a longer
row becomes a list (`- **KEY**: MEANING`, wrapped at 100 columns), and a paragraph or list
item with a longer line is wrapped at 100 columns; the rest is copied as written, so a page
reads as the one-file form did. The text itself is never changed, only where lines break.

Run it again on a one-file SCENARIO.md (after merging edits made to that form) to rebuild
the pages; it refuses an input that is already the index. The pages it writes replace
those of the same name; pages it did not write are left alone.
"""
import argparse
import os
import re
import sys
import tempfile
import textwrap

INDEX_MARK = "<!-- index written by scripts/split_scenario_doc.py -->"
MAX_LINE = 200
WRAP = 100


def slug(text):
    text = re.sub(r"`[^`]*`", "", text)  # "Comparison (`twinsim compare --json`)" -> "comparison"
    text = re.sub(r"\([^)]*\)", "", text)
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def sections(lines):
    """[(level, title, body lines)], level 0 for what precedes the first heading. Headings
    inside code blocks are not headings."""
    out = [(0, "", [])]
    fenced = False
    for line in lines:
        if line.startswith("```"):
            fenced = not fenced
        m = None if fenced else re.match(r"^(##+) (.*)$", line)
        if m:
            out.append((len(m.group(1)), m.group(2).strip(), []))
        else:
            out[-1][2].append(line)
    return out


def is_table_row(line):
    return line.startswith("|") and line.rstrip().endswith("|")


def cells(row):
    # split on | not escaped as \|, dropping the outer empty cells
    parts = re.split(r"(?<!\\)\|", row.strip())
    return [p.strip() for p in parts[1:-1]]


def safe_wrap(text, first_prefix, rest_prefix):
    """textwrap at WRAP columns that never starts a line with what Markdown would read as a
    heading, a list item, a quote or a table row."""
    lines = textwrap.wrap(text, width=WRAP, initial_indent=first_prefix, subsequent_indent=rest_prefix,
                          break_long_words=False, break_on_hyphens=False)
    risky = re.compile(r"^(#|[-*+>|=]( |$)|\d+[.)]( |$))")
    for i in range(1, len(lines)):
        while risky.match(lines[i][len(rest_prefix):]):
            head, _, last = lines[i - 1].rpartition(" ")
            if not head.strip():
                break
            lines[i - 1] = head
            lines[i] = rest_prefix + last + " " + lines[i][len(rest_prefix):]
    return lines


def row_cells(row, columns):
    """A row's cells; a pipe the writer left unescaped (in a code span) in the last column
    stays in its text, as the writer meant it."""
    parts = re.split(r"(?<!\\)\|", row.strip())[1:-1]
    return [p.strip() for p in parts[:columns - 1]] + ["|".join(parts[columns - 1:]).strip()]


def table_as_list(table):
    """A table's rows as a list: `- **first cell**: the rest` (more columns: `header: cell`)."""
    header = cells(table[0])
    out = []
    for row in table[2:]:
        c = [x.replace("\\|", "|") for x in row_cells(row, len(header))]
        if len(header) == 2:
            text = c[1]
        else:
            text = "; ".join(f"{h}: {v}" for h, v in zip(header[1:], c[1:]))
        out += safe_wrap(f"**{c[0]}**: {text}", "- ", "  ")
    return out


def blocks(body):
    """Split a body into blocks: a code fence, a table, a list item or a paragraph, a blank."""
    out, i = [], 0
    while i < len(body):
        line = body[i]
        if line.startswith("```"):
            j = i + 1
            while j < len(body) and not body[j].startswith("```"):
                j += 1
            out.append(("code", body[i:j + 1]))
            i = j + 1
        elif is_table_row(line):
            j = i
            while j < len(body) and is_table_row(body[j]):
                j += 1
            out.append(("table", body[i:j]))
            i = j
        elif not line.strip():
            out.append(("blank", [line]))
            i += 1
        else:  # a paragraph or a list item with its indented continuation lines
            j = i + 1
            item = re.match(r"^(\s*)([-*+]|\d+[.)]) ", line)
            while j < len(body) and body[j].strip() and not is_table_row(body[j]) and not body[j].startswith("```"):
                if re.match(r"^\s*([-*+]|\d+[.)]) ", body[j]) or (item and not body[j].startswith(" ")):
                    break
                j += 1
            out.append(("text", body[i:j]))
            i = j
    return out


def rewrap_text(lines):
    if all(len(x) <= MAX_LINE for x in lines):
        return lines
    m = re.match(r"^(\s*(?:[-*+]|\d+[.)]) )", lines[0])
    first = m.group(1) if m else re.match(r"^\s*", lines[0]).group(0)
    rest = " " * len(first)
    text = " ".join(x.strip() for x in lines)[len(first.strip()):].strip()
    return safe_wrap(text, first, rest)


def readable(body):
    out = []
    for kind, lines in blocks(body):
        if kind == "table" and any(len(x) > MAX_LINE for x in lines) and len(lines) > 2:
            out += table_as_list(lines)
        elif kind == "text":
            out += rewrap_text(lines)
        else:
            out += lines
    return out


def key_group(row):
    """The page a scenario-key row goes to: the first word of its key (`plan.zero` -> plan)."""
    first = cells(row)[0]
    m = re.match(r"^`(?:twinsim )?([a-z_]+)", first)
    if not m:
        return "other"
    return "commands" if first.startswith("`twinsim") else m.group(1)


def split_key_table(body):
    """The scenario-key section: its table's rows by group, and the text after the table."""
    before, table, after = [], [], []
    part = before
    for line in body:
        if is_table_row(line) and part is not after:
            part = table
        elif part is table:
            part = after
        part.append(line)
    groups = {}
    for row in table[2:]:
        groups.setdefault(key_group(row), []).append(row)
    return before, table[:2], groups, after


def strip_blank_edges(lines):
    while lines and not lines[0].strip():
        lines = lines[1:]
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    return lines


GROUP_TITLES = {"model": "model", "plan": "plan", "training": "training", "inference": "inference",
                "cluster": "cluster and GPU", "stack": "software stack", "goodput": "goodput",
                "commands": "calibration and validation flags", "other": "other"}


def pages_from(doc_lines):
    """[(file name, title, lines)] and the index's opening lines."""
    secs = sections(doc_lines)
    top = secs[0][2]
    title = next((x for x in top if x.startswith("# ")), "# twinsim scenario and report contract")
    opening = strip_blank_edges([x for x in top if x != title])
    pages, in_ext = [], False
    for level, head, body in secs[1:]:
        if level == 2 and head.startswith("Extensions"):
            in_ext = True
            ext_head, ext_intro = head, strip_blank_edges(body)
            continue
        body = strip_blank_edges([x for x in body if x.strip() != "---"])
        prefix = "ext-" if in_ext else ""
        if in_ext and head == "Scenario keys":
            before, header, groups, after = split_key_table(body)
            order = list(GROUP_TITLES)  # a group not listed (a new section's key) goes last
            for group, rows in sorted(groups.items(), key=lambda g: order.index(g[0]) if g[0] in order else len(order)):
                name = f"ext-keys-{group}.md"
                intro = strip_blank_edges(before)
                text = intro + ([""] if intro else []) + header + rows
                pages.append((name, f"Scenario keys: {GROUP_TITLES.get(group, group)}", text))
            if after:
                pages.append(("ext-keys-set.md", "Scenario keys: `--set` on catalog entries", strip_blank_edges(after)))
            continue
        pages.append((prefix + slug(head) + ".md", head, body))
    return title, opening, ((ext_head, ext_intro) if in_ext else None), pages


def write_whole(path, lines):
    text = "\n".join(lines).rstrip("\n") + "\n"
    folder = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".split-")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def long_lines(lines):
    fenced, bad = False, []
    for n, line in enumerate(lines, 1):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and len(line) > MAX_LINE:
            bad.append(n)
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--doc", default="docs/SCENARIO.md", help="the contract in its one-file form")
    ap.add_argument("--out", default="docs/scenario", help="folder of the pages")
    args = ap.parse_args()
    with open(args.doc) as f:
        doc = f.read().splitlines()
    if INDEX_MARK in doc:
        sys.exit(f"{args.doc} is already the index of the pages: give the one-file form "
                 "(e.g. `git show REV:docs/SCENARIO.md > docs/SCENARIO.md`, REV a commit before the split, then rerun)")
    title, opening, ext, pages = pages_from(doc)
    os.makedirs(args.out, exist_ok=True)
    rel = os.path.relpath(args.out, os.path.dirname(args.doc) or ".")
    index = [title, "", INDEX_MARK, ""] + opening + [""]
    index += ["The contract is split into the pages below, each one topic; edit the pages.", "", "## Base (v1)", ""]
    for name, head, lines in pages:
        if name.startswith("ext-") and ext and f"## {ext[0]}" not in index:
            index += ["", f"## {ext[0]}", ""] + ext[1] + ([""] if ext[1] else [])
        out = [f"# {head}", "", "Part of the [scenario and report contract](../SCENARIO.md).", ""] + readable(lines)
        bad = long_lines(out)
        if bad:
            sys.exit(f"{name}: lines {bad} are still over {MAX_LINE} characters")
        write_whole(os.path.join(args.out, name), out)
        index.append(f"- [{head}]({rel}/{name})")
    write_whole(args.doc, index)
    print(f"wrote {len(pages)} pages under {args.out} and the index {args.doc}")


if __name__ == "__main__":
    main()
