"""Safe reading of an OpenSim .osim XML file into an element tree that remembers source lines.

The file is untrusted: no DTDs or entity declarations are accepted (no entity expansion attacks),
nothing is evaluated, and every failure — malformed or truncated XML, a bad number — raises
``OsimError`` naming the file and the line.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path
from xml.parsers import expat

from jointmodeller.model.errors import JointModellerError

MAX_FILE_BYTES = 200 * 1024 * 1024


class OsimError(JointModellerError, ValueError):
    """An .osim file that cannot be read; the message names the file and line."""


class Doc:
    """A parsed document: the root element plus the source line of every element."""

    def __init__(self, path: Path, root: ET.Element, lines: dict[int, int]):
        self.path = path
        self.root = root
        self._lines = lines
        self.recovered: list[str] = []  # what a lenient re-read changed (one line each)

    def line(self, el: ET.Element) -> int:
        return self._lines.get(id(el), 0)

    def where(self, el: ET.Element) -> str:
        return f"{self.path}, line {self.line(el)}"

    def error(self, el: ET.Element, message: str) -> OsimError:
        return OsimError(f"{self.where(el)}: {message}")

    # ---- typed accessors ---------------------------------------------------------------------
    def text(self, el: ET.Element | None, tag: str, default: str | None = None) -> str | None:
        """Stripped text of the direct child ``tag`` of el, or default."""
        if el is None:
            return default
        child = el.find(tag)
        if child is None or child.text is None:
            return default
        return child.text.strip()

    def floats(self, el: ET.Element, tag: str, n: int | None = None,
               default: tuple[float, ...] | None = None) -> tuple[float, ...]:
        """The child ``tag``'s whitespace-separated numbers (exactly n when given)."""
        child = el.find(tag)
        if child is None or child.text is None or not child.text.strip():
            if default is not None:
                return default
            raise self.error(el, f"<{el.tag}> needs <{tag}>")
        return self.parse_floats(child, child.text, n)

    def parse_floats(self, el: ET.Element, text: str, n: int | None = None) -> tuple[float, ...]:
        parts = text.replace(",", " ").split()
        try:
            vals = tuple(float(p) for p in parts)
        except ValueError:
            raise self.error(el, f"<{el.tag}> must hold numbers, got {text.strip()[:60]!r}") from None
        if n is not None and len(vals) != n:
            raise self.error(el, f"<{el.tag}> needs {n} numbers, got {len(vals)}")
        if not all(v == v and abs(v) != float("inf") for v in vals):
            raise self.error(el, f"<{el.tag}> holds a non-finite number")
        return vals

    def float(self, el: ET.Element, tag: str, default: float | None = None) -> float:
        vals = self.floats(el, tag, 1, None if default is None else (default,))
        return vals[0]

    def bool(self, el: ET.Element, tag: str, default: bool = False) -> bool:
        t = self.text(el, tag)
        if t is None or t == "":
            return default
        return t.lower() in ("true", "1", "yes")


BARE_AMPERSAND = re.compile(rb"&(?!(?:amp|lt|gt|quot|apos|#[0-9]+|#x[0-9A-Fa-f]+);)")
"""An '&' that starts none of XML's predefined references: OpenSim's parser (TinyXML) keeps such an
'&' as a literal character ("Smith & Jones" in <credits>), expat refuses it."""
LENIENT_ERRORS = (expat.errors.codes[expat.errors.XML_ERROR_INVALID_TOKEN],
                  expat.errors.codes[expat.errors.XML_ERROR_UNDEFINED_ENTITY])


def read_osim_xml(path: str | Path) -> Doc:
    """Parse ``path`` into a Doc; OsimError naming the file and line when it is not valid XML.

    One leniency, as OpenSim's own parser has it: an '&' that starts no XML reference is read as a
    literal '&' (listed in ``Doc.recovered``). DTDs and entity declarations stay refused, so no
    entity is ever expanded."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise OsimError(f"{path}: cannot read the file ({exc.strerror or exc})") from None
    if len(raw) > MAX_FILE_BYTES:
        raise OsimError(f"{path}: {len(raw)} bytes is too large for an OpenSim model")
    if not raw.strip():
        raise OsimError(f"{path}, line 1: the file is empty")
    recovered: list[str] = []
    try:
        root, lines = _parse(path, raw)
    except expat.ExpatError as exc:
        fixed = BARE_AMPERSAND.sub(b"&amp;", raw)
        if exc.code not in LENIENT_ERRORS or fixed == raw:
            raise _xml_error(path, exc) from None
        try:
            root, lines = _parse(path, fixed)
        except expat.ExpatError as exc2:
            raise _xml_error(path, exc2) from None
        at = sorted({raw.count(b"\n", 0, m.start()) + 1 for m in BARE_AMPERSAND.finditer(raw)})
        shown = ", ".join(str(n) for n in at[:10]) + (", ..." if len(at) > 10 else "")
        recovered.append(f"a bare '&' (not an XML reference) read as a literal '&', as OpenSim's parser does "
                         f"(line{'s' if len(at) > 1 else ''} {shown})")
    if root.tag != "OpenSimDocument":
        raise OsimError(f"{path}, line {lines.get(id(root), 1)}: not an OpenSim model (root element "
                        f"<{root.tag}>, expected <OpenSimDocument>)")
    doc = Doc(path, root, lines)
    doc.recovered = recovered
    return doc


def _xml_error(path: Path, exc: expat.ExpatError) -> OsimError:
    msg = expat.ErrorString(exc.code)
    hint = ""
    if msg in ("no element found", "unclosed token") or "unclosed" in msg:
        hint = " — the file looks truncated"
    return OsimError(f"{path}, line {exc.lineno}, column {exc.offset + 1}: malformed XML ({msg}){hint}")


def _parse(path: Path, raw: bytes) -> tuple[ET.Element, dict[int, int]]:
    """(root, element id -> line); expat.ExpatError for malformed XML, OsimError otherwise."""
    builder = ET.TreeBuilder()
    lines: dict[int, int] = {}
    parser = expat.ParserCreate()

    def start(tag, attrs):
        el = builder.start(tag, attrs)
        lines[id(el)] = parser.CurrentLineNumber

    def refuse_dtd(*_args):
        raise OsimError(f"{path}, line {parser.CurrentLineNumber}: DTD and entity declarations are not "
                        "accepted in an .osim file")

    parser.StartElementHandler = start
    parser.EndElementHandler = builder.end
    parser.CharacterDataHandler = builder.data
    parser.StartDoctypeDeclHandler = refuse_dtd
    parser.EntityDeclHandler = refuse_dtd
    try:
        parser.Parse(raw, True)
        root = builder.close()
    except expat.ExpatError:
        raise
    except AssertionError:
        raise OsimError(f"{path}, line {parser.CurrentLineNumber}: malformed XML (unbalanced elements)"
                        " — the file looks truncated") from None
    except OsimError:
        raise
    except (LookupError, ValueError, UnicodeError) as exc:
        raise OsimError(f"{path}, line {parser.CurrentLineNumber}: cannot decode the file ({exc})") from None
    finally:
        # keep the parser's handlers from holding the tree
        parser.StartElementHandler = parser.EndElementHandler = parser.CharacterDataHandler = None
    return root, lines
