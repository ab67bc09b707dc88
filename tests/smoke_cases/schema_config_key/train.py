import json
from pathlib import Path


def load_config():
    return json.loads((Path(__file__).parent / "config.json").read_text())


config = load_config()
learning_rate = config["lr"]  # <- here
print(learning_rate)
