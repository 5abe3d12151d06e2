namespace dynamiccl {}
