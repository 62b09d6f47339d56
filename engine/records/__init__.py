"""engine.records"""
