"""Reading an MSCCL algorithm XML file into plain data, whoever wrote it.

The file is ``<algo>`` with ``<gpu>`` children, each with ``<tb>`` thread blocks listing
``<step>`` elements (the format msccl-tools, TACCL, ForestColl and optcoll write). The reader
keeps every attribute as text plus the line it is on; turning text into numbers, and judging
it, is left to the checks, so that a file with a missing or misspelt attribute is still read
and reported on rather than refused.

Examples
--------
>>> text = '''<algo name="x" coll="allgather" ngpus="2">
...   <gpu id="0" i_chunks="1" o_chunks="2" s_chunks="0">
...     <tb id="0" send="1" recv="-1" chan="0">
...       <step s="0" type="s" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1"/>
...     </tb>
...   </gpu>
... </algo>'''
>>> program = parse_program(text)
>>> program.attrs["coll"], len(program.gpus), program.gpus[0].tbs[0].steps[0].attrs["type"]
('allgather', 1, 's')
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from xml.parsers import expat

from optcoll.core.limits import read_file
from optcoll.exceptions import FileFormatError

__all__ = ["Element", "Program", "GpuElement", "TbElement", "parse_program", "read_program"]


@dataclass
class Element:
    """One XML element: its attributes as written and its line in the file."""

    attrs: dict[str, str]
    line: int


@dataclass
class TbElement(Element):
    """A ``<tb>`` and its ``<step>`` elements in file order."""

    steps: list[Element] = field(default_factory=list)


@dataclass
class GpuElement(Element):
    """A ``<gpu>`` and its ``<tb>`` elements in file order."""

    tbs: list[TbElement] = field(default_factory=list)


@dataclass
class Program:
    """The ``<algo>`` element, its GPUs, and lexical problems the runtimes' parsers trip on."""

    attrs: dict[str, str]
    gpus: list[GpuElement]
    lexical: list[str]
    source: str = "<text>"


_TAG = re.compile(r"<(?![!/])[^>]*>")
_ATTRIBUTE_SPACING = re.compile(r'^<[A-Za-z_]+( [A-Za-z_][\w]*="[^"]*")* ?/?>$')


def _lexical_problems(text: str) -> list[str]:
    """What the runtimes' hand-written XML readers cannot read (they accept a strict subset).

    They read attribute values only in double quotes, separate attributes only by one
    space, and fail on a ``<?xml ...?>`` declaration (``msccl_parser.cc:26-157``).
    """
    problems = []
    number, counted = 1, 0
    for match in _TAG.finditer(text):
        tag = match.group(0)
        if _ATTRIBUTE_SPACING.match(tag):
            continue
        number += text.count("\n", counted, match.start())
        counted = match.start()
        if tag.startswith("<?"):
            problems.append(
                f"line {number}: {tag[:30]!r}: the runtimes' XML reader fails on a "
                f"declaration or processing instruction (msccl_parser.cc:152)"
            )
        else:
            problems.append(
                f"line {number}: {tag[:40]!r}...: the runtimes' XML reader wants "
                f'attributes as name="value" separated by single spaces on one line'
            )
    return problems


def parse_program(text: str, source: str = "<text>") -> Program:
    """Read MSCCL XML ``text``; :class:`FileFormatError` if it is not XML with an ``<algo>`` root.

    Unknown elements are ignored (as the runtimes ignore them); ``<gpu>`` outside ``<algo>``,
    ``<tb>`` outside ``<gpu>`` and ``<step>`` outside ``<tb>`` are errors.
    """
    parser = expat.ParserCreate()
    stack: list[str] = []
    algo: dict[str, str] | None = None
    gpus: list[GpuElement] = []
    errors: list[str] = []

    def start(name: str, attrs: dict[str, str]) -> None:
        nonlocal algo
        line = parser.CurrentLineNumber
        path = tuple(stack)
        stack.append(name)
        if not path:
            if name != "algo":
                errors.append(f"line {line}: the root element is <{name}>, expected <algo>")
            algo = dict(attrs)
        elif path == ("algo",) and name == "gpu":
            gpus.append(GpuElement(dict(attrs), line))
        elif path == ("algo", "gpu") and name == "tb":
            gpus[-1].tbs.append(TbElement(dict(attrs), line))
        elif path == ("algo", "gpu", "tb") and name == "step":
            gpus[-1].tbs[-1].steps.append(Element(dict(attrs), line))

    def end(name: str) -> None:
        stack.pop()

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    try:
        parser.Parse(text, True)
    except expat.ExpatError as err:
        raise FileFormatError(f"{source}: not well-formed XML ({err})") from None
    if errors or algo is None:
        raise FileFormatError(f"{source}: {errors[0] if errors else 'no <algo> element'}")
    return Program(algo, gpus, _lexical_problems(text), source)


def read_program(path: str | Path) -> Program:
    """Read the MSCCL XML file at ``path`` (see :func:`parse_program`)."""
    path = Path(path)
    try:
        text = read_file(path).decode("utf-8")
    except UnicodeDecodeError as err:
        raise FileFormatError(f"{path}: cannot read ({err})") from None
    return parse_program(text, str(path))
