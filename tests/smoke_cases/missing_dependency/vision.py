import numpy as np
import cv2  # <- here


def load_batch(paths):
    return np.stack([cv2.imread(path) for path in paths])
