import numpy as np

NUM_CLASSES = 10


def one_hot(labels):
    return np.eye(NUM_CLASSES)[labels]  # <- here
