import numpy as np

from data import one_hot

# The dataset's labels run from 1 to 10, not 0 to 9.
labels = np.array([1, 4, 10, 7])
print(one_hot(labels).shape)
