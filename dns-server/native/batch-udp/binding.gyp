{
  "targets": [
    {
      "target_name": "batch_udp",
      "sources": ["src/batch_udp.c"],
      "cflags": ["-O2", "-Wall", "-Wextra", "-Wno-unused-parameter"],
      "defines": ["NAPI_VERSION=8"]
    }
  ]
}
