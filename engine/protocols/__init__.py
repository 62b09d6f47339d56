"""engine.protocols"""
