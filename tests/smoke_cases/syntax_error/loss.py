def total_loss(task, consistency, weight=0.5):
    return task + weight *  # <- here
