"""Keep the prose of the documents in step with the tables the binaries are built with.

The managed settings (engine/engine_config.c, printed by `cairnd managed-settings`): their
names, values and defaults in api/openapi.yaml's ClusterParameters and NodeConfig, which of
them wait for a restart in the PATCH description, and the config fields of the desired set
in docs/agent-protocol.md. The flags and variables of cairnd and cairn-agent
(controlplane/config.c, agent/settings.c, printed by --help): README.md's tables of them.

Run from the repository root, after `make`: /usr/bin/python3 -m pytest tests/contract
"""

import re

import pytest

from binaries import AGENT, CAIRND, REPO, cairnd_list, run
AGENT_PROTOCOL = REPO / "docs" / "agent-protocol.md"
README = REPO / "README.md"

# A row of a Markdown table: its cells, stripped.
ROW = re.compile(r"^\s*\|(.*)\|\s*$")


@pytest.fixture(scope="module")
def managed():
    return cairnd_list("managed-settings")


def table_rows(text):
    """The cells of every Markdown table row in text."""
    rows = []
    for line in text.splitlines():
        m = ROW.match(line)
        if m:
            rows.append([c.strip() for c in m.group(1).split("|")])
    return rows


def code(text):
    """The `code` spans of text, in order."""
    return re.findall(r"`([^`]*)`", text)


def as_config(setting):
    """A setting's default as the desired set's JSON shows it, as the documents write it:
    a number bare, a string or a boolean in backticks."""
    if setting["type"] == "integer":
        return setting["default"]
    if setting["type"] == "boolean":
        return "`true`" if setting["default"] == "yes" else "`false`"
    return f"`{setting['default']}`"


def test_cluster_parameters_table(spec, managed):
    """ClusterParameters lists the managed settings: name, values and default."""
    text = spec["components"]["schemas"]["ClusterParameters"]["description"]
    rows = {code(r[0])[0]: r for r in table_rows(text) if len(r) == 3 and code(r[0])}
    problems = []
    for s in managed:
        row = rows.pop(s["parameter"], None)
        if row is None:
            problems.append(f"{s['parameter']}: no row")
            continue
        values, default = row[1], row[2]
        if default != f"`{s['default']}`":
            problems.append(f"{s['parameter']}: default {default}, cairnd has {s['default']}")
        if s["type"] == "enum" and code(values) != s["values"]:
            problems.append(f"{s['parameter']}: values {code(values)}, cairnd has {s['values']}")
        if s["type"] == "integer" and f"integer {s['range'][0]}-{s['range'][1]}" not in values:
            problems.append(f"{s['parameter']}: {values!r} is not integer "
                            f"{s['range'][0]}-{s['range'][1]}")
        if s["type"] == "boolean" and code(values) != ["yes", "no"]:
            problems.append(f"{s['parameter']}: values {values!r}, not `yes` or `no`")
        if s["cluster_only"] != ("only when `cluster_mode` is `enabled`" in values):
            problems.append(f"{s['parameter']}: cluster mode only is {s['cluster_only']}")
    problems += [f"{name}: a row, but not a managed setting" for name in rows]
    assert not problems, "ClusterParameters' table of Cairn's own settings:\n  " + \
        "\n  ".join(problems)


def test_restart_list_of_patch(spec, managed):
    """PATCH /v1/clusters/{id} names the managed settings that wait for a restart."""
    text = " ".join(spec["paths"]["/v1/clusters/{id}"]["patch"]["description"].split())
    m = re.search(r"settings Cairn manages: (.*?), and removed parameters", text)
    assert m, "the PATCH description no longer lists the settings that wait for a restart"
    eq_list = [s["parameter"] for s in managed if s["at_restart"]]
    assert code(m.group(1)) == eq_list, \
        f"PATCH lists {code(m.group(1))} as waiting for a restart; cairnd has {eq_list}"


def change_text(row):
    """A row of `cairnd changes` as the PATCH description's table says it."""
    if row["change"] == "at_once":
        return "is applied at once"
    if row["change"] == "operation":
        article = "an" if row["operation"][0] in "aeiou" else "a"
        return f"runs {article} `{row['operation']}` operation" + (", alone" if row["alone"] else "")
    if row["change"] == "not_yet":
        return "is not supported yet: `409 CHANGE_NOT_SUPPORTED_YET`"
    return "is never allowed: `400 VALIDATION_FAILED`"


def test_change_table_of_patch(spec):
    """PATCH /v1/clusters/{id}'s table of what a change of each field does is cairnd's."""
    text = spec["paths"]["/v1/clusters/{id}"]["patch"]["description"]
    documented = {code(r[0])[0]: r[1] for r in table_rows(text)
                  if len(r) == 2 and code(r[0]) and r[0] != "field"}
    built = {row["field"]: change_text(row) for row in cairnd_list("changes")}
    assert documented == built, f"PATCH documents {documented}; cairnd's change table is {built}"


def test_node_config_schema(spec, managed):
    """NodeConfig has a required field per managed setting, with its default."""
    schema = spec["components"]["schemas"]["NodeConfig"]
    problems = []
    for s in managed:
        field = s["field"]
        prop = schema["properties"].get(field)
        if field not in schema["required"] or prop is None:
            problems.append(f"{field}: not a required property")
        elif f"(default {as_config(s)})" not in " ".join(prop["description"].split()):
            problems.append(f"{field}: description lacks (default {as_config(s)})")
    assert not problems, "NodeConfig:\n  " + "\n  ".join(problems)


def test_agent_protocol_config_table(managed):
    """docs/agent-protocol.md's table of config fields has each managed setting's field,
    the parameter it comes from and its default."""
    rows = {code(r[0])[0]: r for r in table_rows(AGENT_PROTOCOL.read_text(encoding="utf-8"))
            if len(r) == 3 and code(r[0])}
    problems = []
    for s in managed:
        row = rows.get(s["field"])
        want = [f"`{s['field']}`", f"cluster parameter `{s['parameter']}`", as_config(s)]
        if row != want:
            problems.append(f"{s['field']}: row {row}, expected {want}")
    assert not problems, f"{AGENT_PROTOCOL.name}:\n  " + "\n  ".join(problems)


def readme_section(title):
    """The text of README.md's `## title` section."""
    text = README.read_text(encoding="utf-8")
    m = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## )", text, re.MULTILINE | re.DOTALL)
    assert m, f"README.md has no section ## {title}"
    return m.group(1)


def readme_flags(title):
    """The flags and variables README.md's tables in section title document."""
    flags, env = set(), set()
    for row in table_rows(readme_section(title)):
        if row[0].startswith("`--"):
            flags |= set(re.findall(r"`--([a-z-]+)", row[0]))
            env |= set(re.findall(r"CAIRN_[A-Z_]+", row[1]))
    return flags, env


def help_flags(binary, own=()):
    """The flags of the usage line(s) `binary --help` prints and the variables it names,
    less the flags (and variables) in own, which are not settings."""
    text = run(binary, "--help")
    usage = re.split(r"\n {7}\S", text, maxsplit=1)[0]  # up to the next command's line
    flags = set(re.findall(r"--([a-z-]+)", usage)) - set(own)
    env = set(re.findall(r"CAIRN_[A-Z_]+", text)) - {f"CAIRN_AGENT_{f.upper()}" for f in own}
    return flags, env


@pytest.mark.parametrize("title, binary, own", [
    ("Running cairnd", CAIRND, ()),
    ("Running cairn-agent", AGENT, ("config",)),
])
def test_readme_flag_tables(title, binary, own):
    """README.md's tables list every flag and variable --help does, and no other."""
    doc_flags, doc_env = readme_flags(title)
    flags, env = help_flags(binary, own)
    assert doc_flags == flags, (f"README ({title}) lacks {sorted(flags - doc_flags)}, "
                                f"has {sorted(doc_flags - flags)} that {binary.name} lacks")
    assert doc_env == env, (f"README ({title}) lacks {sorted(env - doc_env)}, "
                            f"has {sorted(doc_env - env)} that {binary.name} lacks")
