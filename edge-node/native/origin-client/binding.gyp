{
  "targets": [
    {
      "target_name": "origin_client",
      "sources": ["src/origin_client.c"],
      "cflags": ["-O2", "-Wall", "-Wextra", "-Wno-unused-parameter", "-std=gnu11"],
      "defines": ["NAPI_VERSION=8"]
    }
  ]
}
