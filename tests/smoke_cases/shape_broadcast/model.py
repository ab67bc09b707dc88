import numpy as np


def linear(features, weight, bias):
    hidden = features @ weight
    return hidden + bias  # <- here


def init(in_features, out_features):
    weight = np.zeros((in_features, out_features))
    bias = np.zeros(in_features)  # should be out_features
    return weight, bias
