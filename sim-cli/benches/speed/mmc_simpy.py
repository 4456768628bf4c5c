"""M/M/8 at rho = 0.9 in SimPy: the same model and request count as
`worlds/mmc-8.yaml` and the hand-written loop (8 servers, 10 ms mean
service, 720 arrivals/s, 10^6 requests), written the way SimPy's own
examples write a queue (a Resource, one process per customer).

The speed benchmark runs it when SimPy is importable:

    python3 -m pip install simpy==4.1.2
    cargo bench -p sim-cli --bench speed -- mmc

It prints the mean wait in queue, so a fast wrong model shows.
"""

import random
import sys

import simpy

SERVERS = 8
LAMBDA = 720.0
MU = 100.0
REQUESTS = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000


def main():
    arrivals = random.Random(1)
    services = random.Random(2)
    env = simpy.Environment()
    servers = simpy.Resource(env, capacity=SERVERS)
    waited = [0.0, 0]

    def customer():
        arrived = env.now
        with servers.request() as slot:
            yield slot
            waited[0] += env.now - arrived
            waited[1] += 1
            yield env.timeout(services.expovariate(MU))

    def source():
        for _ in range(REQUESTS):
            yield env.timeout(arrivals.expovariate(LAMBDA))
            env.process(customer())

    env.process(source())
    env.run()
    print(f"served {waited[1]} Wq {waited[0] / waited[1]:.6f}")


main()
