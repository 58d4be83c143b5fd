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


def small_dqn(num_envs: int = 2) -> list[str]:
    """Flags of a DQN run small enough for a test: learning starts at once, a checkpoint every 200 steps."""
    return (
        f"--num-envs {num_envs} --buffer-size 2000 --learning-starts 100 --batch-size 8 --log-every 100 "
        "--checkpoint-every 200 --eval-every 0 --epsilon-decay-steps 500 --torch-threads 1"
    ).split()
