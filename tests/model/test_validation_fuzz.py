"""Property-based: malformed JSON projects and values end in ValidationError or success, never in
another exception; and an import that fails leaves an existing project file exactly as it was."""

from __future__ import annotations

import copy
import hashlib
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jointmodeller.model import Project, ValidationError
from jointmodeller.model.codec import project_from_json, project_to_json
from tests.model.factories import small_project

BASE = json.loads(project_to_json(small_project(with_mesh=False)))

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-10**30, max_value=10**30)
    | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


def _paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, prefix + (i,))


ALL_PATHS = [p for p in _paths(BASE) if p]


@st.composite
def mutated_documents(draw):
    doc = copy.deepcopy(BASE)
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        path = draw(st.sampled_from(ALL_PATHS))
        parent = doc
        try:
            for key in path[:-1]:
                parent = parent[key]
            action = draw(st.sampled_from(["replace", "delete", "add"]))
            if action == "replace":
                parent[path[-1]] = draw(json_values)
            elif action == "delete":
                del parent[path[-1]]
            elif isinstance(parent, dict):
                parent[draw(st.text(max_size=6))] = draw(json_values)
            elif isinstance(parent, list):
                parent.append(draw(json_values))
        except (KeyError, IndexError, TypeError):
            continue
    return doc


def _decode(text):
    try:
        return project_from_json(text)
    except ValidationError:
        return None


@pytest.mark.slow
@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_documents())
def test_malformed_documents_end_in_validation_error_or_success(doc):
    text = json.dumps(doc, allow_nan=True)
    result = _decode(text)
    assert result is None or isinstance(result, Project)
    if result is not None:  # whatever is accepted is valid and round-trips
        assert project_from_json(project_to_json(result)) == result


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_garbage_bytes_end_in_validation_error(raw):
    assert _decode(raw) is None or isinstance(_decode(raw), Project)


@pytest.mark.slow  # 500 imports through the CLI: over a minute
@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(doc=mutated_documents())
def test_failed_import_never_touches_the_existing_file(tmp_path_factory, doc):
    from jointmodeller.cli import main

    folder = tmp_path_factory.mktemp("fuzz")
    target = folder / "existing.jmdb"
    if not target.exists():
        from jointmodeller.persistence import save_project
        save_project(target, small_project(with_mesh=False))
    before = hashlib.sha256(target.read_bytes()).hexdigest()
    src = folder / "in.json"
    src.write_text(json.dumps(doc, allow_nan=True))
    rc = main(["import", str(src), str(target), "--force"])  # replacing an existing project needs --force
    if rc != 0:
        assert hashlib.sha256(target.read_bytes()).hexdigest() == before
    from jointmodeller.persistence import load_project
    assert isinstance(load_project(target), Project)
