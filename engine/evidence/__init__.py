"""engine.evidence"""
