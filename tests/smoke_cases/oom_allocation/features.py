import numpy as np

num_nodes = 10_000_000
# A dense adjacency matrix where the paper uses a sparse one: 728 TiB.
adjacency = np.zeros((num_nodes, num_nodes))  # <- here
print(adjacency.sum())
