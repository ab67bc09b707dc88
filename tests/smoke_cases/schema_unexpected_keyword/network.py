def build_model(hidden, layers=2):
    return {"hidden": hidden, "layers": layers}
