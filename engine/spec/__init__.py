"""engine.spec"""
