"""`railonly push`: configs onto switches over SSH (netmiko sessions, pusher) and where to connect (targets).

May import: lab, the runtime's doors (runtime.protocol, registry: a lab's SSH endpoints and the way into
its namespaces), railonly.fabric; never checks or traffic.
"""
