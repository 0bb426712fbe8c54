print("herald-feed")
