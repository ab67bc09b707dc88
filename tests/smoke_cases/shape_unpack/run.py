import numpy as np


def patchify(images, patch):
    batch, channels, height, width = images.shape  # <- here
    return images.reshape(batch, channels, height // patch, patch, width // patch, patch)


grayscale = np.zeros((2, 32, 32))  # the channel axis was squeezed away
print(patchify(grayscale, 4).shape)
