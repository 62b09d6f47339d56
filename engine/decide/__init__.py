"""engine.decide"""
