"""Small pieces shared by the node and the lab: properties files and config definitions."""
