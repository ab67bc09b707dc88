from pathlib import Path


def read_checkpoint(path):
    try:
        return Path(path).read_bytes()
    except FileNotFoundError as err:
        raise RuntimeError(f"cannot resume from {path}") from err  # <- here


read_checkpoint("checkpoints/last.ckpt")
