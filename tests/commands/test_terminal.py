import io

from rlengine.commands.terminal import say_on_a_terminal


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_start_up_lines_go_to_a_terminal_only(monkeypatch):
    terminal, log = Terminal(), io.StringIO()
    monkeypatch.setattr("sys.stderr", terminal)
    say_on_a_terminal("rlengine: loading TensorFlow and the plugins")
    monkeypatch.setattr("sys.stderr", log)
    say_on_a_terminal("rlengine: loading TensorFlow and the plugins")
    assert terminal.getvalue() == "rlengine: loading TensorFlow and the plugins\n"
    assert log.getvalue() == ""  # logs and pipes: results only
