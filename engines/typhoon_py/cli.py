def main(): print("x")
