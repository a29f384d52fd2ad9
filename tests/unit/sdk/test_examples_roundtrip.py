"""Every JobSet manifest in examples/ survives YAML -> SDK model -> YAML unchanged (the
other objects some examples carry, such as a ServiceAccount and its RBAC, are not the
SDK's)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from jobset.sdk.models import JobSet, dump_all, load_all

EXAMPLES = sorted((Path(__file__).resolve().parents[3] / "examples").glob("*.yaml"))


def test_there_are_examples() -> None:
    assert len(EXAMPLES) >= 15


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_round_trips_exactly(path: Path) -> None:
    text = path.read_text()
    docs = [d for d in yaml.safe_load_all(text) if d]
    originals = [d for d in docs if d["kind"] == "JobSet"]
    if len(originals) != len(docs):
        text = yaml.safe_dump_all(originals, sort_keys=False)
    models = load_all(text)
    assert len(models) == len(originals)
    for model, original in zip(models, originals, strict=True):
        assert isinstance(model, JobSet)
        assert model.to_dict() == original
        assert JobSet.from_yaml(model.to_yaml()).to_dict() == original
    assert [d for d in yaml.safe_load_all(dump_all(models)) if d] == originals
