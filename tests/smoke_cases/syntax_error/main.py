from loss import total_loss

print(total_loss(1.0, 2.0))
