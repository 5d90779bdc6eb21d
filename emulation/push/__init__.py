"""`railonly push`: configs onto switches over SSH (netmiko sessions) and where to connect (inventory).

May import: lab, runtime.protocol, netns.sshd (a lab's switches), railonly.fabric; never checks or traffic.
"""
