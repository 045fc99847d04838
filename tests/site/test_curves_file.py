"""A run's curves file is a script the page loads: whatever a run's name or id holds, it stays data."""

from __future__ import annotations

import json
import re

from leaderboard.curves import curves_script


def test_hostile_names_stay_inside_the_json() -> None:
    name, rid = '</script><script>alert(1)</script>', 'x"];alert(2);//'
    text = curves_script(rid, name, [{"title": "Training loss", "y": "loss", "key": "train/loss",
                                      "points": [[0, 1.0], [1, 0.5]]}])
    assert "<" not in text and ">" not in text and "&" not in text
    m = re.fullmatch(r'\(window\.OPENLAB_CURVES = window\.OPENLAB_CURVES \|\| \{\}\)\[(".*?(?<!\\)")\] = (\{.*\});\n',
                     text)
    assert m is not None, text
    assert json.loads(m.group(1)) == rid
    data = json.loads(m.group(2))
    assert data["name"] == name and data["run_id"] == rid and data["curves"][0]["points"] == [[0, 1.0], [1, 0.5]]
