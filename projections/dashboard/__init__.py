"""The live dashboard (``/dashboard``): read-model changes pushed over a WebSocket, never polled.

``migration`` adds statement-level change triggers (one NOTIFY per statement), ``coalesce`` maps
changed tables to dashboard areas and throttles bursts, ``snapshots`` reads an area for one tenant
(row-level security), ``hub`` listens and fans out, ``routes`` serves the page and the socket.
"""
