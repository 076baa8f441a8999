#!/usr/bin/env python3
"""Checks core/'s rooms (core/README.md): every C, CUDA or header file under
core/ and models/ lives in a listed room and includes headers only of its own
room or of rooms listed above it. Exit 0 when all hold, 1 with one line per
breach, 2 on usage errors. Usage: rooms.py SOURCE_DIR"""
import os
import re
import sys

if len(sys.argv) != 2:
    print('usage: rooms.py SOURCE_DIR', file=sys.stderr)
    sys.exit(2)
root = sys.argv[1]
readme = os.path.join(root, 'core', 'README.md')
try:
    text = open(readme, encoding='utf-8').read()
except OSError as e:
    print(f'rooms.py: {readme}: {e.strerror}', file=sys.stderr)
    sys.exit(2)
order = re.findall(r'^- `([a-z_]+)/`', text.split('rooms, bottom up', 1)[-1], re.M)
if not order:
    print(f'rooms.py: {readme}: no room list found', file=sys.stderr)
    sys.exit(2)
rank = {r: i for i, r in enumerate(order)}
include = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
breaches = []


def room_of(rel):
    """core/<room>/... or models/...; None for a loose file."""
    parts = rel.split('/')
    if parts[0] == 'models':
        return 'models'
    if parts[1] == 'include':
        return 'include'
    return parts[1] if len(parts) > 2 else None


for top in ('core', 'models'):
    for d, _, files in os.walk(os.path.join(root, top)):
        for f in sorted(files):
            if not f.endswith(('.c', '.h', '.cu', '.cuh')):
                continue
            path = os.path.join(d, f)
            rel = os.path.relpath(path, root)
            room = room_of(rel)
            if room is None or (room not in rank and room != 'include'):
                breaches.append(f'{rel}: not in a room listed in core/README.md')
                continue
            for h in include.findall(open(path, encoding='utf-8', errors='replace').read()):
                if os.path.exists(os.path.join(d, h)):
                    continue  # its own folder
                if h.startswith('amptrain/'):
                    continue  # the public SDK
                if os.path.exists(os.path.join(root, 'models', h)):
                    target = 'models'
                elif os.path.exists(os.path.join(root, 'core', h)):
                    target = h.split('/')[0] if '/' in h else None
                else:
                    continue  # a system or generated header
                if target is None:
                    breaches.append(f'{rel}: includes "{h}", a loose file of core/')
                elif room == 'include':
                    breaches.append(f'{rel}: the SDK includes "{h}" of core/{target}/')
                elif target not in rank:
                    breaches.append(f'{rel}: includes "{h}" from {target}/, not a listed room')
                elif rank[target] > rank[room]:
                    breaches.append(f'{rel}: includes "{h}": {room}/ may not include {target}/ (listed below it)')
for b in breaches:
    print(b)
print(f'rooms: {len(order)} rooms, {len(breaches)} breaches')
sys.exit(1 if breaches else 0)
