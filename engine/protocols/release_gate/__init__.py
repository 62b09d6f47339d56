"""engine.protocols.release_gate"""
