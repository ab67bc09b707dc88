def converge(tolerance=1e-6):
    loss, step = 1.0, 0
    while loss > tolerance: step += 1  # <- here  (the loss is never updated)
    return step


print(converge())
