"""Memory text made safe to place in Markdown (`Bundle.to_markdown()`, docs/trust.md).

A memory's text comes from whoever wrote it (an agent, a tool result, an HMX event),
and the bundle's Markdown is read by a model as structure: sections, bullets. A text
must therefore stay inside its bullet. `bullet_text()` makes it so:

* every line break Python knows (`\\r\\n`, `\\r`, U+2028, U+2029, U+0085, `\\v`, `\\f`,
  U+001C-U+001E, as `str.splitlines()` splits them) becomes `\\n`, so no break the
  composer does not see survives (CommonMark ends a line at `\\r` too);
* each line after the first is indented under the bullet, so it continues the list
  item instead of starting a block of its own;
* a continuation line that could open a block inside the item (a heading `#`, a
  setext underline `=`/`-`, a quote `>`, a list marker `-`/`*`/`+`/`1.`, a fence
  `` ` ``/`~`, a table `|`, an HTML block `<`) has that first character
  backslash-escaped: CommonMark shows an escaped punctuation character as itself.

So a text can neither end its bullet nor forge a heading, in any CommonMark reader.
"""

from __future__ import annotations

import re

INDENT = "  "  # the continuation indent of a `- ` bullet
# The first non-blank character of a line that could start a block (and, for digits,
# the ordered-list marker `1.` / `1)` they would begin).
_BLOCK_START = re.compile(r"^( {0,3})([#=\-*+>`~|<_]|\d{1,9}(?=[.)]))")


def _guard(line: str) -> str:
    body = line.lstrip(" \t")
    if len(body) != len(line):  # tabs in the indent count as CommonMark counts them (stops of 4)
        line = line[: len(line) - len(body)].expandtabs(4) + body
    match = _BLOCK_START.match(line)
    if match is None:
        return line
    lead, mark = match.group(1), match.group(2)
    if mark[0].isdigit():  # escape the `.` or `)` after the digits
        end = len(lead) + len(mark)
        return line[:end] + "\\" + line[end:]
    return lead + "\\" + line[len(lead):]


def bullet_text(text: str) -> str:
    """`text` as the body of a `- ` bullet: one line break kind, continuation lines
    indented and kept from opening blocks (see the module docstring)."""
    lines = text.splitlines()
    if not lines:
        return ""
    return "\n".join([lines[0], *(INDENT + _guard(line) if line.strip() else "" for line in lines[1:])])
