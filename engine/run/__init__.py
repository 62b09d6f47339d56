"""engine.run"""
