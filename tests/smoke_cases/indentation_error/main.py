def schedule(step, warmup=100):
    if step < warmup:
        return step / warmup
      return 1.0  # <- here


print(schedule(10))
