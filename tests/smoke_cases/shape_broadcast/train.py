import numpy as np

from model import init, linear

batch = np.ones((8, 16))
weight, bias = init(16, 4)
logits = linear(batch, weight, bias)
print(logits.shape)
