"""The docs: the reference pages are generated from the code and committed up to date, and every Python
example runs, on the public API."""

import ast
import json
import os
import re

import attrs
import pluggy
import pytest

import rlengine
from devtools.docgen import CLI_PAGE, CONFIG_PAGE, DOCS_DIR, HOOKS_PAGE, cli_reference, hook_reference
from devtools.docgen_config import (
    config_reference,
    engine_sections,
    plugin_sections,
    section_table,
    undocumented_fields,
)
from rlengine.plugin import hookspecs
from tests.api.surface import core_references, kit_modules, private_reference, public_names

REGENERATE = "run python -m devtools.docgen"
MKDOCS_YML = os.path.join(os.path.dirname(DOCS_DIR), "mkdocs.yml")


def _read(path):
    with open(path) as f:
        return f.read()


def test_hook_reference_matches_the_hook_specs():
    assert _read(HOOKS_PAGE) == hook_reference(), f"docs/hooks.md is stale: {REGENERATE}"


@pytest.mark.first_party  # the page lists the commands of rlengine-tools too
def test_cli_reference_matches_the_parser():
    assert _read(CLI_PAGE) == cli_reference(), f"docs/cli.md is stale: {REGENERATE}"


def test_cli_reference_documents_every_subcommand():
    from rlengine.cli import parser

    commands = next(a for a in parser()._actions if a.__class__.__name__ == "_SubParsersAction").choices
    page = cli_reference()
    for name in commands:
        assert f"## `rlengine {name}`" in page, f"docs/cli.md has no section for rlengine {name}"


def test_config_reference_documents_the_engine_sections_as_the_classes_say():
    """Runs without any plugin: the engine's sections alone must be in the committed page."""
    committed = _read(CONFIG_PAGE)
    for name, cls in engine_sections():
        table = "\n".join(section_table(f"`[{name}]`", f"The engine's `{cls.__name__}` (`{cls.__module__}`).", cls))
        assert table in committed, f"the [{name}] section of docs/config-reference.md is stale: {REGENERATE}"


@pytest.mark.first_party
def test_config_reference_matches_the_config_classes():
    assert _read(CONFIG_PAGE) == config_reference(), f"docs/config-reference.md is stale: {REGENERATE}"


@pytest.mark.first_party
def test_config_reference_gives_every_key_a_type_a_default_and_a_meaning():
    sections = config_reference().split("\n## Presets\n")[0]  # the presets table that ends the page has no keys
    rows = [line for line in sections.splitlines() if line.startswith("| ") and not line.startswith("| key")]
    assert rows
    for row in rows:
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", row)[1:-1]]
        assert len(cells) == 4 and all(cells), f"incomplete row in docs/config-reference.md: {row}"


def _fields_without_comment(sections) -> list[str]:
    return [f"[{name}] {field} ({cls.__module__})" for name, cls in sections for field in undocumented_fields(cls)]


def test_every_engine_config_field_has_a_comment():
    missing = _fields_without_comment(engine_sections())
    assert not missing, f"config fields without a comment (add a trailing '# ...' or a '#:' line above): {missing}"


@pytest.mark.first_party
def test_every_first_party_plugin_config_field_has_a_comment():
    missing = _fields_without_comment((name, cls) for name, _, _, cls in plugin_sections())
    assert not missing, f"config fields without a comment (add a trailing '# ...' or a '#:' line above): {missing}"


@attrs.define
class _PartlyCommented:
    commented: int = 1  # has a meaning
    #: a meaning on the line above
    above: int = 2
    bare: int = 3


@attrs.define
class _Override(_PartlyCommented):
    """Overrides without a comment inherit the base's; ``bare`` has none to inherit."""

    commented: int = 4
    bare: float = 5.0


def test_a_field_without_a_comment_is_named():
    assert undocumented_fields(_PartlyCommented) == ["_PartlyCommented.bare"]
    assert undocumented_fields(_Override) == ["_Override.bare"]


def test_every_page_is_in_the_site_navigation():
    nav = _read(MKDOCS_YML)
    for page in sorted(os.listdir(DOCS_DIR)):
        if page.endswith(".md"):
            assert re.search(rf":\s*{re.escape(page)}\s*$", nav, re.MULTILINE), f"docs/{page} is not in mkdocs.yml nav"


def test_every_hook_is_prefixed_typed_and_documented():
    pm = pluggy.PluginManager("rlengine")
    pm.add_hookspecs(hookspecs)
    names = hookspecs.hook_names()
    assert sorted(names) == sorted(n for n in dir(pm.hook) if not n.startswith("_"))
    for name in names:
        fn = getattr(hookspecs, name)
        assert name.startswith("rlengine_")
        assert "return" in fn.__annotations__, f"{name} has no return annotation"
        assert all(arg in fn.__annotations__ for arg in fn.__code__.co_varnames[: fn.__code__.co_argcount])
        doc = fn.__doc__ or ""
        assert "Called" in doc or "called" in doc, f"{name}: docstring must say when it is called"
        assert "return" in doc.lower(), f"{name}: docstring must say what the return means"


# -- every Python example of the docs is real code, on the public API ---------------------------
REPO_DIR = os.path.dirname(DOCS_DIR)
GENERATED = {os.path.basename(p) for p in (HOOKS_PAGE, CLI_PAGE, CONFIG_PAGE)}  # signatures, not examples
#: Each file of the example package of docs/plugins.md, as the first line of its block names it.
PLUGIN_PAGE_FILES = {"setup.py", "tests/test_my_plugin.py",
                     *(f"my_plugin/{m}.py" for m in ("plugin", "algorithm", "qlearner", "optimizers", "environment",
                                                     "graph_environment",
                                                     "transformer", "writer", "distributions", "pipeline", "command",
                                                     "checks", "callback", "encoder")),
                     "my_plugin/presets/vpg_linewalk.toml"}
#: The other Python examples, each run by the test named here.
OTHER_EXAMPLES = {"quickstart.md": ["test_quickstart_python_example_runs"],
                  "predict.md": ["test_predict_page_example_runs[0]", "test_predict_page_example_runs[1]"],
                  "graph-environments.md": [f"test_graph_environments_page_examples_run[{i}]" for i in range(4)],
                  "multi-agent.md": ["test_multi_agent_page_example_runs"]}
#: What of the core an example may import: the public surface, as tests/api/test_public_api.py holds it.
PUBLIC_NAMES, PUBLIC_KIT_MODULES = public_names(), kit_modules()


def python_blocks(page: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", _read(os.path.join(DOCS_DIR, page)), re.S)


def example_pages() -> list[str]:
    return sorted(p for p in os.listdir(DOCS_DIR) if p.endswith(".md") and p not in GENERATED)


def plugin_page_files() -> dict[str, str]:
    """File path -> source, for every Python block of docs/plugins.md whose first line is ``# <path>``, and
    every TOML block whose first line is ``# my_plugin/<path>.toml`` (that line is not part of the file)."""
    files = {}
    for block in python_blocks("plugins.md"):
        match = re.match(r"# ([\w/]+\.py)\n", block)
        assert match, f"a Python block of docs/plugins.md does not start with '# <file>': {block[:80]!r}"
        assert match.group(1) not in files, f"docs/plugins.md has two blocks for {match.group(1)}"
        files[match.group(1)] = block
    page = _read(os.path.join(DOCS_DIR, "plugins.md"))
    files.update({path: body for path, body in re.findall(r"```toml\n# (my_plugin/[\w/]+\.toml)\n(.*?)```", page, re.S)})
    return files


def test_every_python_example_of_the_docs_is_run_by_a_test():
    assert set(plugin_page_files()) == PLUGIN_PAGE_FILES
    others = {page: len(python_blocks(page)) for page in example_pages() if page != "plugins.md"}
    assert {p: n for p, n in others.items() if n} == {p: len(t) for p, t in OTHER_EXAMPLES.items()}, (
        "a Python block outside docs/plugins.md needs a test of its own, listed in OTHER_EXAMPLES")
    tests = {name.split("[")[0] for names in OTHER_EXAMPLES.values() for name in names}  # [i]: a parameter
    assert tests <= set(globals()), f"OTHER_EXAMPLES names a test that does not exist: {tests - set(globals())}"


def _private(module: str, name: str) -> bool:
    if module.split(".")[0] == "tensorflow":
        return module.startswith("tensorflow.python")
    return private_reference(module, name, PUBLIC_NAMES, PUBLIC_KIT_MODULES)


def test_the_docs_examples_use_only_the_public_api():
    private = []
    for page in example_pages():
        for block in python_blocks(page):
            private += [f"docs/{page}: {module}:{name} ({block.splitlines()[0]}, line {line})"
                        for line, module, name in core_references(ast.parse(block)) if _private(module, name)]
    assert not private, "docs examples must use the public API only:\n" + "\n".join(private)


# -- the example package of docs/plugins.md -----------------------------------------------------
@pytest.fixture
def my_package(tmp_path, monkeypatch):
    """The package of docs/plugins.md, written to disk and importable; removed from sys.modules after."""
    import sys

    root = tmp_path / "my-plugin"
    for path, source in plugin_page_files().items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(source)
    (root / "my_plugin" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(root))
    yield root
    for name in [m for m in sys.modules if m.split(".")[0] in ("my_plugin", "test_my_plugin")]:
        del sys.modules[name]


@pytest.fixture
def my_plugin(my_package):
    import importlib

    return importlib.import_module("my_plugin.plugin")


def _metrics_csv(root) -> list[dict]:
    import csv

    with open(root / "metrics.csv", newline="") as f:
        return list(csv.DictReader(f))


def test_plugins_page_setup_py_declares_the_package_and_its_entry_points(my_package):
    import importlib

    import setuptools

    declared = {}
    source = plugin_page_files()["setup.py"]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(setuptools, "setup", lambda **kwargs: declared.update(kwargs))
        exec(compile(source, "docs/plugins.md: setup.py", "exec"), {"__name__": "setup"})  # noqa: S102
    assert declared["packages"] == ["my_plugin"]
    modules = [entry.split("=")[1].strip() for entry in declared["entry_points"]["rlengine"]]
    assert modules == ["my_plugin.plugin", "my_plugin.checks"]
    for module in modules:
        assert importlib.import_module(module).RLENGINE_API_VERSION == rlengine.API_VERSION


def test_plugins_page_examples_register_and_train_together(my_plugin, tmp_path, capsys):
    from rlengine.cli import commands_of, parser
    from rlengine.plugin.manager import build_plugins
    from rlengine.plugin.registry import KINDS

    registered = build_plugins(load_entry_points=False,
                               extra_plugins=[("my-plugin", my_plugin)]).registered_by("my-plugin")
    expected = {"algorithms": ["qlearn", "vpg"], "environments": ["linewalk"],
                "graph_environments": ["my/LineWalk-v0"], "transformers": ["scale_by_max"],
                "writers": ["csv"], "distributions": ["laplace"], "pipelines": ["round_robin"], "commands": ["score"],
                "callbacks": ["slow_iterations"], "networks": ["fourier"], "presets": ["vpg/linewalk"]}
    assert set(expected) == {kind.plural for kind in KINDS}, "docs/plugins.md needs a worked example of every kind"
    assert registered == expected
    tuned = rlengine.Engine(None, ["train.algorithm=vpg", "train.env=linewalk", 'train.writers=["csv"]'],
                            extra_plugins=[("my-plugin", my_plugin)])  # csv: the core-only env has no default writers
    assert tuned.preset.name == "vpg/linewalk" and tuned.config.sections["vpg"].learning_rate == 0.05

    root = tmp_path / "run"
    raw = {"train": dict(algorithm="vpg", env="linewalk", transformers=["scale_by_max"], writers=["csv"],
                         num_envs=8, unroll_length=16, num_env_steps=2048, eval_interval=8, num_eval_episodes=4,
                         seed=1, root_dir=str(root)),
           "vpg": {"learning_rate": 0.05}, "slow_iterations": {"max_seconds": 0.0}}  # every iteration is "slow"
    result = rlengine.Engine(raw, extra_plugins=[("my-plugin", my_plugin)]).train()
    assert capsys.readouterr().err.splitlines()[-1] == "my-plugin: 16 iterations took over 0.0 s"  # the callback
    rows = _metrics_csv(root)
    assert [int(r["iteration"]) for r in rows if not r["eval/average_return"]] == list(range(1, 17))
    returns = [float(r["train/episode_return"]) for r in rows if r["train/episode_return"]]
    assert returns[0] < 0.7 and min(returns[-4:]) > 0.95  # the first, random walks often time out
    assert result.eval_return == 1.0  # the greedy policy walks straight to the goal

    # the page's command, as the CLI runs it: listed, parsed, handed the plugins the CLI loaded
    plugins = build_plugins(load_entry_points=False, extra_plugins=[("my-plugin", my_plugin)])
    commands = commands_of(plugins)
    assert "score" in parser(commands).format_help()
    args = parser(commands).parse_args(["score", str(root), "--episodes", "4"])
    args.plugins = plugins
    assert commands["score"].run(args) == 0
    assert capsys.readouterr().out == f"{root}: mean return 1.000 over 4 episodes\n"
    args = parser(commands).parse_args(["score", str(tmp_path)])
    with pytest.raises(rlengine.RLEngineError, match="holds no config.toml"):
        commands["score"].run(args)


def test_listing_the_example_plugin_and_its_command_imports_no_tensorflow(my_package):
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent("""
        import sys
        from rlengine.cli import commands_of, parser
        from rlengine.plugin.manager import build_plugins
        import my_plugin.checks, my_plugin.plugin
        plugins = build_plugins(load_entry_points=False, extra_plugins=[("my-plugin", my_plugin.plugin),
                                                                        ("my-plugin-checks", my_plugin.checks)])
        assert "score" in parser(commands_of(plugins)).format_help()
        print(sorted(m for m in sys.modules if m.split(".")[0] in ("tensorflow", "tensorflow_probability")))
    """)
    path = os.pathsep.join([str(my_package), REPO_DIR, os.environ.get("PYTHONPATH", "")])
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": path})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


@pytest.mark.thorough  # the root suite leaves it out for time; this package's tox env runs it
def test_off_policy_example_trains_from_prioritized_replay_one_update_per_env_step(my_plugin, tmp_path):
    class Updates:
        count = None

        @rlengine.hookimpl
        def rlengine_train_end(self, run, error):
            Updates.count = int(run.algorithm.num_updates.numpy())

    raw = {"train": dict(algorithm="qlearn", env="linewalk", num_envs=4, unroll_length=8, num_env_steps=1024,
                         eval_interval=8, num_eval_episodes=4, seed=1, writers=["csv"], root_dir=str(tmp_path / "run")),
           "qlearn": {"prioritized_replay": True}}  # num_updates_per_iteration = 0, initial_collect_steps = 64
    result = rlengine.Engine(raw, extra_plugins=[("my-plugin", my_plugin), ("updates", Updates())]).train()

    assert result.iterations == 32  # 32 env steps each
    assert Updates.count == (32 - 2) * 32  # two warm-up iterations, then one update per env step collected
    rows = _metrics_csv(tmp_path / "run")
    assert len(rows) == 32 + 4  # a row per iteration and per evaluation
    assert result.eval_return == 1.0


def test_pipeline_example_trains_round_robin_and_resumes_where_it_stopped(my_plugin, tmp_path):
    from rlengine.testing import MemoryWriter, testing_plugin

    root = tmp_path / "run"
    plugins = [("my-plugin", my_plugin), ("testing", testing_plugin())]

    def raw(num_env_steps):
        return {"train": dict(algorithm="vpg", env="linewalk", pipeline="round_robin", num_envs=8, unroll_length=16,
                              num_env_steps=num_env_steps, eval_interval=0, checkpoint_interval=3, seed=1,
                              writers=["csv", "memory"], root_dir=str(root)),
                "round_robin": {"groups": 2}}

    rlengine.Engine(raw(640), extra_plugins=plugins).train()  # 10 iterations of 16 steps x 4 copies
    first = MemoryWriter.last.rows
    assert [r["env_steps"] for r in first] == [64 * i for i in range(1, 11)]
    assert [r["round_robin/group"] for r in first] == [0.0, 1.0] * 5
    assert "[round_robin]" in (root / "config.toml").read_text()
    os.remove(root / "checkpoints" / "ckpt-10.complete")  # as if killed after iteration 10's row, before its checkpoint

    rlengine.Engine(raw(1024), extra_plugins=plugins, force=True).train()  # resumes from iteration 9
    resumed = MemoryWriter.last.rows
    assert [r["iteration"] for r in resumed] == list(range(10, 17))
    assert [r["round_robin/group"] for r in resumed] == [1.0, 0.0] * 3 + [1.0]  # where save_state left off
    assert [int(r["env_steps"]) for r in _metrics_csv(root)] == [64 * i for i in range(1, 17)]  # none twice

    with pytest.raises(rlengine.ConfigError, match="does not split into round_robin.groups = 3 equal groups"):
        rlengine.Engine({**raw(640), "round_robin": {"groups": 3}}, extra_plugins=plugins)
    with pytest.raises(rlengine.ConfigError, match="trains on-policy algorithms only"):
        rlengine.Engine({"train": {**raw(640)["train"], "algorithm": "qlearn"}}, extra_plugins=plugins)


def test_csv_writer_example_keeps_the_rows_up_to_the_resumed_step(my_package, tmp_path):
    from my_plugin.writer import CsvConfig, CsvWriter

    def run(steps, resume_from, killed=False):
        writer = CsvWriter(str(tmp_path), CsvConfig())
        writer.resume_from(resume_from)
        for step in steps:
            writer.write({"iteration": step // 10, "env_steps": step, "wall_time": 0.5, "loss/total": 1.0})
        if killed:  # a row torn mid-write
            writer.file.write("7,7")
        writer.close()
        writer.close()  # safe twice

    run([10, 20, 30, 40], resume_from=0, killed=True)
    run([30, 40, 50], resume_from=20)  # resumed from a checkpoint at 20 env steps
    assert [int(r["env_steps"]) for r in _metrics_csv(tmp_path)] == [10, 20, 30, 40, 50]
    run([], resume_from=50)
    assert [int(r["env_steps"]) for r in _metrics_csv(tmp_path)] == [10, 20, 30, 40, 50]  # never truncated
    run([10], resume_from=0)  # from scratch: rows of an earlier run killed before its first checkpoint go
    rows = _metrics_csv(tmp_path)
    assert [int(r["env_steps"]) for r in rows] == [10] and rows[0]["train/episode_return"] == ""


def test_several_optimizers_example_builds_and_applies_each_optimizer(my_package):
    import tensorflow as tf
    import tf_keras
    from my_plugin.optimizers import SeveralOptimizers

    class ActorCritic(SeveralOptimizers, rlengine.Algorithm):
        def __init__(self):
            super().__init__(None, None, None)
            self.actor, self.critic = tf.Variable(1.0), tf.Variable([1.0, 1.0])
            self.optimizers = [(tf_keras.optimizers.Adam(0.1), [self.actor]),
                               (tf_keras.optimizers.SGD(0.5), [self.critic])]

    algorithm = ActorCritic()
    algorithm.build()
    algorithm.apply_gradients([(tf.constant([1.0, 2.0]), algorithm.critic), (tf.constant(3.0), algorithm.actor)])
    assert algorithm.actor.numpy() == pytest.approx(0.9)  # Adam's first step: the learning rate
    assert algorithm.critic.numpy().tolist() == [0.5, 0.0]
    assert [int(o.iterations.numpy()) for o, _ in algorithm.optimizers] == [1, 1]


def test_distribution_example_round_trips_through_the_core_converters(my_plugin):
    import tensorflow as tf
    import tensorflow_probability as tfp

    from rlengine.collect.converters import Converters
    from rlengine.plugin.manager import build_plugins

    plugins = build_plugins(load_entry_points=False, extra_plugins=[("my-plugin", my_plugin)])
    converters = Converters(plugins.registries.distributions)
    info = {"dist": tfp.distributions.Laplace(tf.constant([[0.5, -1.0]]), tf.constant([[1.0, 2.0]]))}
    params = converters.to_params(info)
    rebuilt = converters.from_params(params, converters.spec_of(info))["dist"]
    assert isinstance(rebuilt, tfp.distributions.Laplace)
    assert rebuilt.scale.numpy().tolist() == [[1.0, 2.0]] and sorted(params["dist"]) == ["loc", "scale"]


def test_lifecycle_hook_example_refuses_an_unreachable_goal_and_sets_a_target(my_plugin, tmp_path):
    import importlib

    plugins = [("my-plugin", my_plugin), ("my-plugin-checks", importlib.import_module("my_plugin.checks"))]
    raw = {"train": {"algorithm": "vpg", "env": "linewalk", "writers": ["csv"], "root_dir": str(tmp_path)}}
    assert rlengine.Engine(raw, extra_plugins=plugins).config.train.target_return == 1.0
    assert rlengine.Engine({"train": {**raw["train"], "target_return": 0.5}},
                           extra_plugins=plugins).config.train.target_return == 0.5
    with pytest.raises(rlengine.ConfigError, match="linewalk.max_steps = 3 is below linewalk.length = 4"):
        rlengine.Engine({**raw, "linewalk": {"max_steps": 3}}, extra_plugins=plugins)


def test_the_example_package_test_passes(my_package, tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("test_my_plugin", my_package / "tests" / "test_my_plugin.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.test_vpg_trains_on_the_counting_env(tmp_path / "run")  # tmp_path holds the package: not a run dir


@pytest.mark.first_party
def test_quickstart_python_example_runs(tmp_path, monkeypatch):
    """The example as written, on a budget a test can afford and in a temporary run directory."""
    (example,) = python_blocks("quickstart.md")
    engine_class = rlengine.Engine

    class Smaller(engine_class):
        def __init__(self, config=None, overrides=(), **kwargs):
            smaller = ["train.num_env_steps=512", 'train.writers=["jsonl"]',
                       f"train.root_dir={json.dumps(str(tmp_path / 'run'))}"]
            super().__init__(config, [*overrides, *smaller], **kwargs)

    monkeypatch.setattr(rlengine, "Engine", Smaller)
    monkeypatch.chdir(REPO_DIR)  # the example names examples/ppo_cartpole.toml
    namespace: dict = {}
    exec(compile(example, "docs/quickstart.md", "exec"), namespace)  # noqa: S102
    assert namespace["result"].env_steps == 512 and namespace["result"].root_dir == str(tmp_path / "run")


@pytest.fixture(scope="module")
def predict_run(tmp_path_factory):
    from tests.policy.runs import train_cartpole

    return train_cartpole(tmp_path_factory)


@pytest.mark.first_party
@pytest.mark.parametrize("block", [0, 1])
def test_predict_page_example_runs(predict_run, block):
    """docs/predict.md's examples as written, on a short PPO run of their own."""
    from tests.policy.test_load_predict import run_documented_examples

    run_documented_examples("docs/predict.md", predict_run, only=block)


@pytest.mark.first_party
def test_multi_agent_page_example_runs():
    """docs/multi-agent.md's block: the pettingzoo plugin's testing game through PettingZoo's own API test."""
    pytest.importorskip("rlengine_pettingzoo", reason="the multi-agent page uses the pettingzoo plugin")
    (code,) = python_blocks("multi-agent.md")
    exec(compile(code, "docs/multi-agent.md", "exec"), {"__name__": "multi_agent_page"})  # noqa: S102


@pytest.mark.first_party
@pytest.mark.parametrize("block", range(4))
def test_graph_environments_page_examples_run(block):
    """docs/graph-environments.md's blocks build on one another: each runs after the ones before it."""
    pytest.importorskip("rlengine_tfenvs", reason="the graph environments page uses the tfenvs plugin")
    namespace = {"__name__": "graph_environments_page"}
    for i, code in enumerate(python_blocks("graph-environments.md")[:block + 1]):
        exec(compile(code, f"docs/graph-environments.md block {i}", "exec"), namespace)  # noqa: S102


@pytest.mark.thorough  # the root suite leaves it out for time; this package's tox env runs it
def test_plugins_page_graph_environment_is_its_python_twin(my_plugin, tmp_path):
    """The page's graph LineWalk keeps the graph environment contract and trains as the Python LineWalk does."""
    from my_plugin.graph_environment import GraphLineWalk

    from rlengine.testing import check_graph_environment

    check_graph_environment(GraphLineWalk("my/LineWalk-v0", num_envs=4), steps=60, random_episodes=False)
    returns = {}
    for env in ("linewalk", "my/LineWalk-v0"):
        raw = {"train": dict(algorithm="vpg", env=env, writers=["csv"], num_envs=4, unroll_length=16,
                             num_env_steps=512, eval_interval=4, num_eval_episodes=4, seed=2,
                             root_dir=str(tmp_path / env.replace("/", "-")))}
        result = rlengine.Engine(raw, extra_plugins=[("my-plugin", my_plugin)]).train()
        returns[env] = [r for _, _, r in result.eval_history]
    assert returns["my/LineWalk-v0"] == returns["linewalk"] and len(returns["linewalk"]) == 2
    twin = rlengine.Engine(None, ["train.algorithm=vpg", "train.env='my/LineWalk-v0'", "train.writers=['csv']"],
                           extra_plugins=[("my-plugin", my_plugin)])
    assert (twin.preset.name, twin.preset.serves) == ("vpg/linewalk", "my/LineWalk-v0")  # its twin_of's preset


def test_encoder_example_builds_its_features_from_the_spec(my_package):
    import tensorflow as tf
    from my_plugin.encoder import Fourier, FourierConfig

    encoder = Fourier({"a": tf.TensorSpec([3]), "b": tf.TensorSpec([2, 2])}, FourierConfig(features=5))
    features = encoder({"a": tf.zeros([7, 3]), "b": tf.ones([7, 2, 2])})
    assert encoder.output_size == 10 and features.shape == (7, 10)
    assert encoder.trainable_variables == ()  # the frequencies are drawn once, never trained


@pytest.mark.first_party
def test_encoder_example_trains_the_first_party_ppo(my_plugin, tmp_path):
    raw = {"train": dict(algorithm="ppo", env="CartPole-v1", num_envs=8, unroll_length=32, num_env_steps=16_384,
                         eval_interval=16, num_eval_episodes=4, writers=[], checkpoint_seconds=0,
                         root_dir=str(tmp_path / "run")),
           "ppo": {"encoder": "fourier", "learning_rate": 1e-3, "num_epochs": 10, "mini_batch_size": 256},
           "fourier": {"features": 32, "scale": 0.5}}
    result = rlengine.Engine(raw, extra_plugins=[("my-plugin", my_plugin)]).train()
    assert result.eval_return > 100  # random play averages about 22; this run reaches about 300
