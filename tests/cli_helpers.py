"""Running the command line inside a test, as a user would: exit code, stdout, stderr."""
from pongrl.cli import main


def run(args, capsys):
    """Call `pongrl ARGS...`; returns (exit code, stdout, stderr). No traceback may reach stderr."""
    try:
        code = main(args)
    except SystemExit as exit:
        code = exit.code
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err
