#!/usr/bin/python3
"""The M/M/c reference model in SimPy 2 (Debian's python3-simpy), for bench/mmc_vs_simpy.sh.

The textbook SimPy formulation: a source process creates one customer process per arrival
(exponential inter-arrival times); each customer requests one of c servers (a Resource), holds
it for an exponential service time and releases it. Prints the mean wait in the queue (request
to grant) over all customers, and the number served.

    python3 bench/mmc_simpy.py [customers] [arrival_rate] [service_rate] [servers] [seed]
"""
import random
import sys

from SimPy.Simulation import (Process, Resource, activate, hold, initialize, now, release,
                              request, simulate)


class Totals:
    wait = 0.0
    served = 0


class Customer(Process):
    def visit(self, servers, service_rate, rng):
        arrived = now()
        yield request, self, servers
        Totals.wait += now() - arrived
        yield hold, self, rng.expovariate(service_rate)
        yield release, self, servers
        Totals.served += 1


class Source(Process):
    def generate(self, customers, arrival_rate, service_rate, servers, rng):
        for _ in range(customers):
            c = Customer()
            activate(c, c.visit(servers, service_rate, rng))
            yield hold, self, rng.expovariate(arrival_rate)


def main():
    customers = int(sys.argv[1]) if len(sys.argv) > 1 else 2_000_000
    arrival_rate = float(sys.argv[2]) if len(sys.argv) > 2 else 12.0
    service_rate = float(sys.argv[3]) if len(sys.argv) > 3 else 1.0
    servers_count = int(sys.argv[4]) if len(sys.argv) > 4 else 16
    seed = int(sys.argv[5]) if len(sys.argv) > 5 else 1
    rng = random.Random(seed)
    initialize()
    servers = Resource(capacity=servers_count)
    source = Source()
    activate(source, source.generate(customers, arrival_rate, service_rate, servers, rng))
    simulate(until=1e12)
    print(f"simpy served {Totals.served} mean_wait {Totals.wait / Totals.served:.6f}")


if __name__ == "__main__":
    main()
