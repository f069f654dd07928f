"""Finding runs by what they are about: the input fields a process declares searchable
(``"x-search": true`` on a top-level property of its ``input`` schema) are kept as search keys
beside the run when it is written, indexed, and ``GET /v1/processes/runs?input.<field>=<value>``
reads runs through them."""
