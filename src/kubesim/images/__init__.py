"""Container images for real-process pods: what an image is to the kubelet's runtime.

`types` is the contract between the image store (which loads archives and unpacks their
layers) and the container runtime (which runs a container in an image's root): the runtime
asks an `ImageLookup` for a reference and gets the unpacked root and the image's config.
"""
