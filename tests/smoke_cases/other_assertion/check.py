import numpy as np

weights = np.full(4, 0.3)
assert np.isclose(weights.sum(), 1.0), "the mixing weights must sum to 1"  # <- here
