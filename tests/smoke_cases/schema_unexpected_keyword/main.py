from network import build_model

settings = {"hidden": 64, "dropout": 0.1}
model = build_model(**settings)  # <- here
print(model)
